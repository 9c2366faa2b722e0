<?php

namespace App\Filament\Resources\Users\Tables;

use App\Jobs\BanUser;
use App\Jobs\DeleteUserThreads;
use App\Jobs\VerifyAuthor;
use App\Models\User;
use Filament\Actions\Action;
use Filament\Actions\ActionGroup;
use Filament\Forms\Components\Checkbox;
use Filament\Forms\Components\TextInput;
use Filament\Notifications\Notification;
use Filament\Tables\Table;

class UsersTable
{
    public static function configure(Table $table): Table
    {
        return $table->recordActions([
            ActionGroup::make([
                Action::make('verify_author')
                    ->action(function (User $user) {
                        VerifyAuthor::dispatchSync($user);

                        Notification::make()->title($user->name.' is now a verified author.')->success()->send();
                    })
                    ->requiresConfirmation(),

                Action::make('ban_author')
                    ->schema([
                        TextInput::make('reason')->required(),
                        Checkbox::make('delete_threads')->default(false),
                    ])
                    ->action(function (User $user, array $data) {
                        BanUser::dispatchSync($user, $data['reason']);

                        if ($data['delete_threads']) {
                            DeleteUserThreads::dispatchSync($user);
                        }

                        Notification::make()->title($user->name.' is now banned.')->success()->send();
                    })
                    ->requiresConfirmation(),
            ]),
        ]);
    }
}
